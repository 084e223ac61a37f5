"""firmware_bridge: everything of edgelearn that touches the outside world.

MQTT, the msgpack wire format, message logs and the gateway service live here; the
learning library (:mod:`edgelearn`) knows nothing of them. See docs/architecture.md
and, for the wire format, docs/protocol.md.
"""
