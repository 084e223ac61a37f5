"""Prometheus (Debian's) scrapes the gateway's /metrics: the target is up, every metric
family the page exposes answers a PromQL query with the page's series, and every
query of the Grafana-ready example in docs/ answers with data."""

from __future__ import annotations

import json
import re
import time

import pytest
from brokers import Broker, free_port, wait_until
from harness import REPO, EdgeGateway, Mqtt, Timer, http_get
from programs import Prometheus

STREAMS = ("office", "hall")
N = 120


def families(page: str) -> dict[str, str]:
    """``{name: type}`` of the page's ``# TYPE`` lines."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", page, re.M))


def series(page: str, name: str) -> dict[frozenset, float]:
    """The page's samples of one family: ``{labels: value}``."""
    out = {}
    for labels, value in re.findall(rf"^{re.escape(name)}(?:{{(.*?)}})? (\S+)$", page, re.M):
        pairs = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels or ""))
        out[pairs] = float(value)
    return out


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """A gateway that has served two labelled streams, and a Prometheus scraping it."""
    tmp = tmp_path_factory.mktemp("prometheus")
    broker = Broker(tmp / "broker")
    broker.start()
    metrics_port = free_port()
    gateway = EdgeGateway(tmp / "gw", broker.port, sections={
        "prometheus": {"enabled": True, "port": metrics_port}})
    mqtt = Mqtt(broker.port)
    prometheus = Prometheus(tmp / "prom", f"127.0.0.1:{metrics_port}")
    try:
        Timer.note(f"Prometheus {prometheus.version()} (Debian), promtool alike")
        with Timer(f"Prometheus: gateway with 2 streams of {N} readings"):
            gateway.start()
            mqtt.wait_online(gateway)
            mqtt.feed(STREAMS, N)
        with Timer("Prometheus: start, first scrape up"):
            prometheus.start()
            wait_until(lambda: [t for t in prometheus.targets() if t["health"] == "up"], 30,
                       "the edgelearn target to be up", interval=0.5)
        yield gateway, prometheus, f"http://127.0.0.1:{metrics_port}/metrics"
    finally:
        mqtt.close()
        prometheus.stop()
        if gateway.running():
            gateway.stop()
        broker.kill()


def test_the_scrape_target_is_up(scraped):
    gateway, prometheus, url = scraped
    (target,) = prometheus.targets()
    assert target["health"] == "up" and target["lastError"] == ""
    assert target["scrapeUrl"] == url
    (up,) = prometheus.query('up{job="edgelearn"}')
    assert up["value"][1] == "1"


def test_every_metric_family_answers_a_promql_query_with_the_page_series(scraped):
    gateway, prometheus, url = scraped
    with Timer("Prometheus: a PromQL query per metric family"):
        status, body = http_get(url)
        assert status == 200
        page = body.decode()
        names = families(page)
        assert len(names) >= 20, names
        # The traffic is over: scrapes after this page (one a second) hold its series,
        # and the same values for what only traffic moves.
        time.sleep(2.5)
        for name, kind in names.items():
            expected = series(page, name)
            assert expected and all(("gateway", "gw1") in labels for labels in expected), name
            got = {frozenset((k, v) for k, v in r["metric"].items()
                             if k not in ("__name__", "job", "instance")): float(r["value"][1])
                   for r in prometheus.query(name)}
            assert set(got) == set(expected), name
            if re.fullmatch(r"edgelearn_(stream_(messages|asked|learned|label_requests)"
                            r"|predictions|messages)(_total)?", name):
                assert got == expected, name
    # The traffic's own numbers, through PromQL.
    predictions = [n for n in names if re.fullmatch(r"edgelearn_predictions(_total)?", n)]
    assert predictions, names
    assert float(prometheus.query(f"sum({predictions[0]})")[0]["value"][1]) == len(STREAMS) * N
    per_stream = {r["metric"]["stream"]: float(r["value"][1])
                  for r in prometheus.query("edgelearn_stream_messages_total")}
    assert per_stream == {s: N for s in STREAMS}


def test_the_grafana_example_queries_all_answer(scraped):
    """docs/grafana-edgelearn.json: each panel's PromQL gives data from the real
    Prometheus (a dashboard that shows nothing would pass a JSON check)."""
    gateway, prometheus, url = scraped
    dashboard = json.loads((REPO / "docs" / "grafana-edgelearn.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert len(exprs) >= 6
    with Timer(f"Prometheus: the {len(exprs)} queries of the Grafana example"):
        for expr in exprs:
            promql = expr.replace("$gateway", "gw1").replace("$__rate_interval", "30s")
            wait_until(lambda: prometheus.query(promql), 20, f"data for {expr!r}", interval=0.5)
