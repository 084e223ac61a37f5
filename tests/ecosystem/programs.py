"""The real programs of ``make test-ecosystem``, each started on free loopback ports
in a test's own folder: Home Assistant, Prometheus and Node-RED. (systemd, in a
booted nspawn root, is in ``machine.py``.)"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import urllib.parse

from brokers import free_port, installed, wait_until
from harness import CACHE, http_get, http_post, need, terminate


class Program:
    """A subprocess whose output goes to ``<directory>/<name>.log``."""

    name = "program"

    def __init__(self, directory: pathlib.Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.log = directory / f"{self.name}.log"
        self.process: subprocess.Popen | None = None

    def _spawn(self, argv: list[str], env: dict | None = None) -> None:
        self._log_file = open(self.log, "ab")
        self.process = subprocess.Popen(argv, cwd=self.directory, stdout=self._log_file,
                                        stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                                        start_new_session=True)

    def alive(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise AssertionError(f"{self.name} exited:\n{self.tail()}")
        return True

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 60) -> None:
        if self.process is not None and self.process.poll() is None:
            terminate(self.process, timeout)
        if self.process is not None:
            self._log_file.close()
        self.process = None


# -- Home Assistant -----------------------------------------------------------------------

HA_CONFIGURATION = """\
homeassistant:
  name: edgelearn test home
  latitude: 52.37
  longitude: 4.89
  elevation: 0
  unit_system: metric
  time_zone: UTC
  country: NL
http:
  server_host: 127.0.0.1
  server_port: {port}
api:
config:
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: info
"""


class HomeAssistant(Program):
    """Home Assistant from its own venv (tools/ecosystem/homeassistant.sh), with a
    configuration of its own, onboarded through its REST API; the MQTT integration
    is set up through the REST config flow, as a user does in the UI."""

    name = "homeassistant"
    CLIENT_ID = "http://127.0.0.1/"
    USERNAME, PASSWORD = "operator", "edgelearn-test-password"  # a throwaway HA's owner

    def __init__(self, directory: pathlib.Path):
        super().__init__(directory)
        venv = need(CACHE / "homeassistant" / "venv" / "bin" / "hass", "Home Assistant",
                    "homeassistant.sh").parent.parent
        self.hass = venv / "bin" / "hass"
        self.version = (CACHE / "homeassistant" / "version").read_text().strip()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_dir = directory / "config"
        self.config_dir.mkdir(exist_ok=True)
        (self.config_dir / "configuration.yaml").write_text(
            HA_CONFIGURATION.format(port=self.port))
        # Onboarding's other steps marked done before the first start: its core_config
        # step would set up met, radio_browser and google_translate, which reach the
        # internet. The user step (the owner and a token) goes through the REST API.
        storage = self.config_dir / ".storage"
        storage.mkdir(exist_ok=True)
        (storage / "onboarding").write_text(json.dumps({
            "version": 4, "minor_version": 1, "key": "onboarding",
            "data": {"done": ["core_config", "analytics", "integration"]}}))
        self.token: str | None = None
        self.refresh_token: str | None = None

    def python_version(self) -> str:
        return subprocess.run([str(self.hass.parent / "python"), "--version"],
                               capture_output=True, text=True).stdout.strip()

    def start(self, timeout: float = 240) -> None:
        # --skip-pip: everything it loads was installed by the installer; a missing
        # requirement fails the test instead of being fetched while it runs.
        self._spawn([str(self.hass), "--config", str(self.config_dir), "--skip-pip",
                     "--log-no-color"])

        def up():
            self.alive()
            try:
                status, body = http_get(f"{self.url}/manifest.json", timeout=2)
            except OSError:
                return False
            return status == 200
        wait_until(up, timeout, "Home Assistant's HTTP server", interval=0.5)
        if self.refresh_token:
            self._refresh()
        # The core is up only when every integration set up at start is done.
        wait_until(lambda: self.alive() and self.core_state() == "RUNNING", timeout,
                   "Home Assistant's core to run", interval=0.5)

    def core_state(self) -> str | None:
        if not self.token:
            return "RUNNING"  # before onboarding there is no token to ask with
        try:
            status, body = http_get(f"{self.url}/api/config", headers=self._auth(), timeout=2)
        except OSError:
            return None
        return json.loads(body).get("state") if status == 200 else None

    def _auth(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    def onboard(self) -> None:
        """Onboarding's user step through the REST API: the owner, and a token."""
        status, body = http_post(f"{self.url}/api/onboarding/users", {
            "client_id": self.CLIENT_ID, "name": "Operator", "username": self.USERNAME,
            "password": self.PASSWORD, "language": "en"})
        assert status == 200, (status, body)
        code = json.loads(body)["auth_code"]
        status, body = http_post(f"{self.url}/auth/token", {
            "grant_type": "authorization_code", "code": code, "client_id": self.CLIENT_ID},
            form=True)
        assert status == 200, (status, body)
        tokens = json.loads(body)
        self.token, self.refresh_token = tokens["access_token"], tokens["refresh_token"]
        assert self.get("/api/onboarding") == [
            {"step": step, "done": True} for step in ("user", "core_config", "analytics",
                                                      "integration")]

    def _refresh(self) -> None:
        status, body = http_post(f"{self.url}/auth/token", {
            "grant_type": "refresh_token", "refresh_token": self.refresh_token,
            "client_id": self.CLIENT_ID}, form=True)
        assert status == 200, (status, body)
        self.token = json.loads(body)["access_token"]

    def get(self, path: str):
        status, body = http_get(f"{self.url}{path}", headers=self._auth(), timeout=10)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def post(self, path: str, payload: dict):
        status, body = http_post(f"{self.url}{path}", payload, headers=self._auth())
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def setup_mqtt(self, broker_port: int) -> dict:
        """The MQTT integration's config flow, step by step, as the UI drives it."""
        flow = self.post("/api/config/config_entries/flow",
                         {"handler": "mqtt", "show_advanced_options": False})
        for _ in range(5):
            if flow["type"] == "create_entry":
                return flow
            assert flow["type"] == "form", flow
            fields = {f["name"] for f in flow["data_schema"]}
            answer = {"broker": "127.0.0.1", "port": broker_port}
            answer = {k: v for k, v in answer.items() if k in fields}
            flow = self.post(f"/api/config/config_entries/flow/{flow['flow_id']}", answer)
        raise AssertionError(f"the MQTT config flow did not finish: {flow}")

    def template(self, text: str) -> str:
        status, body = http_post(f"{self.url}/api/template", {"template": text},
                                 headers=self._auth())
        assert status == 200, (status, body)
        return body.decode()

    def states(self) -> dict[str, dict]:
        return {s["entity_id"]: s for s in self.get("/api/states")}

    def mqtt_entities(self) -> dict[tuple[str, str], dict]:
        """Every entity of the MQTT integration by (device name, entity name), with
        its entity id, state, attributes and its device's info."""
        rows = self.template(
            "{% for e in integration_entities('mqtt') %}"
            "{% set d = device_id(e) %}"
            "{{ {'entity': e, 'device': device_attr(d, 'name'),"
            " 'manufacturer': device_attr(d, 'manufacturer'), 'model': device_attr(d, 'model'),"
            " 'sw_version': device_attr(d, 'sw_version'),"
            " 'via': device_attr(device_attr(d, 'via_device_id'), 'name')"
            " if device_attr(d, 'via_device_id') else none,"
            " 'device_id': d} | to_json }}\n{% endfor %}")
        states = self.states()
        out = {}
        for line in rows.splitlines():
            if line.strip():
                row = json.loads(line)
                row["state"] = states.get(row["entity"], {}).get("state")
                row["attributes"] = states.get(row["entity"], {}).get("attributes", {})
                name = row["attributes"].get("friendly_name", "")
                out[(row["device"], name.removeprefix(f"{row['device']} "))] = row
        return out


def home_assistant_with_mqtt(directory: pathlib.Path, broker_port: int) -> HomeAssistant:
    """Home Assistant started, onboarded, its MQTT integration set up on the broker."""
    ha = HomeAssistant(directory)
    ha.start()
    try:
        ha.onboard()
        entry = ha.setup_mqtt(broker_port)
        assert entry["result"]["state"] == "loaded", entry
    except BaseException:
        ha.stop()
        raise
    return ha


# -- Prometheus ---------------------------------------------------------------------------

class Prometheus(Program):
    """Debian's prometheus (tools/ecosystem/prometheus.sh) scraping the gateway's
    /metrics every second, on a free loopback port with its own data folder."""

    name = "prometheus"

    def __init__(self, directory: pathlib.Path, target: str):
        super().__init__(directory)
        self.binary = installed("prometheus", "prometheus", "the Prometheus tests "
                                "(bash tools/ecosystem/prometheus.sh)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = directory / "prometheus.yml"
        self.config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: edgelearn\n"
            f"    static_configs: [{{targets: ['{target}']}}]\n")

    def version(self) -> str:
        out = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return (out.stdout or out.stderr).split()[2]

    def start(self) -> None:
        self._spawn([self.binary, f"--config.file={self.config}",
                     f"--storage.tsdb.path={self.directory / 'data'}",
                     f"--web.listen-address=127.0.0.1:{self.port}"])
        wait_until(lambda: self.alive() and self._ready(), 60, "Prometheus to be ready",
                   interval=0.3)

    def _ready(self) -> bool:
        try:
            return http_get(f"{self.url}/-/ready", timeout=2)[0] == 200
        except OSError:
            return False

    def query(self, promql: str) -> list[dict]:
        status, body = http_get(f"{self.url}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql}))
        reply = json.loads(body)
        assert status == 200 and reply["status"] == "success", (promql, status, reply)
        return reply["data"]["result"]

    def targets(self) -> list[dict]:
        return json.loads(http_get(f"{self.url}/api/v1/targets")[1])["data"]["activeTargets"]


def promtool() -> str:
    return installed("promtool", "prometheus", "the Prometheus tests "
                     "(bash tools/ecosystem/prometheus.sh)")


# -- Node-RED -----------------------------------------------------------------------------

class NodeRed(Program):
    """Node-RED and node-red-node-msgpack from npm (tools/ecosystem/nodered.sh), with a
    flow of ``nodes`` and a user folder of its own."""

    name = "node-red"

    def __init__(self, directory: pathlib.Path, flow: list[dict]):
        super().__init__(directory)
        install = need(CACHE / "node-red" / "node_modules" / "node-red" / "red.js",
                       "Node-RED", "nodered.sh").parents[2]
        self.red = install / "node_modules" / "node-red" / "red.js"
        self.versions = {name: json.loads((install / "node_modules" / name / "package.json")
                                          .read_text())["version"]
                         for name in ("node-red", "node-red-node-msgpack")}
        self.port = free_port()
        self.user_dir = directory / "user"
        self.user_dir.mkdir(exist_ok=True)
        # Node-RED loads extra nodes from <userDir>/node_modules.
        link = self.user_dir / "node_modules"
        if not link.exists():
            link.symlink_to(install / "node_modules")
        (self.user_dir / "flows.json").write_text(json.dumps(flow))
        (self.user_dir / "settings.js").write_text(
            "module.exports = {uiHost: '127.0.0.1', uiPort: %d, flowFile: 'flows.json',"
            " credentialSecret: false, logging: {console: {level: 'info'}}};\n" % self.port)

    def start(self) -> None:
        node = shutil.which("node") or "/usr/bin/node"
        self._spawn([node, str(self.red), "--userDir", str(self.user_dir),
                     "--settings", str(self.user_dir / "settings.js")])
        wait_until(lambda: self.alive() and "Started flows" in self.log.read_text(errors="replace"),
                   90, "Node-RED to start its flows", interval=0.3)

    def connected(self) -> bool:
        return "Connected to broker" in self.log.read_text(errors="replace")

