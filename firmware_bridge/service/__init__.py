"""The service: the gateway that runs the pipeline on a broker (a room of its own).

The worker and its MQTT connections, checkpoints, the label journal, the counters
registry, systemd notification, the warm-up, the message recorder and the configuration;
its outputs to the world beyond MQTT predictions (Home Assistant discovery, Prometheus,
the JSON status mirror) are sinks, in :mod:`firmware_bridge.service.sinks`. It uses the
pipeline and the wire; it never imports offline replay.
"""
