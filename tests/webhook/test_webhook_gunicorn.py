"""gunicorn's configuration for admission traffic (the settings, not a server: see test_webhook_server)."""
from __future__ import annotations

from pathlib import Path

import yaml

from dralint_webhook.app import Settings, Webhook
from dralint_webhook.certs import issue, write
from dralint_webhook.gunicorn_conf import ServeOptions, WebhookServer, bind_address, settings
from dralint_webhook.manifests import TIMEOUT_SECONDS
from dralint_webhook.metrics import Metrics
from dralint_webhook.tls import ServingTLS
from dralint_webhook.worker import WebhookWorker

GO_IDLE_CONN_TIMEOUT = 90   # the API server's HTTP transport closes idle connections after this
DEPLOYMENT = Path(__file__).resolve().parents[2] / "webhook" / "deploy" / "base" / "deployment.yaml"


def hook_with_tls(tmp_path) -> Webhook:
    write(tmp_path, "svc", "ns", issue("svc", "ns"))
    tls = ServingTLS(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    return Webhook(settings=Settings(), metrics=Metrics(), tls=tls, warmed=True)


def test_settings_fit_admission_traffic(tmp_path):
    hook = hook_with_tls(tmp_path)
    conf = settings(ServeOptions(bind="127.0.0.1", port=9443, workers=3, threads=4, health_port=9080), hook)
    assert conf["bind"] == ["127.0.0.1:9443", "127.0.0.1:9080"]
    assert issubclass(conf["worker_class"], WebhookWorker) and conf["worker_class"].health_port == 9080
    assert conf["worker_class"].timeout_seconds == TIMEOUT_SECONDS
    assert (conf["workers"], conf["threads"]) == (3, 4)
    assert conf["keepalive"] > GO_IDLE_CONN_TIMEOUT
    assert conf["graceful_timeout"] > TIMEOUT_SECONDS and conf["preload_app"] is True
    assert conf["certfile"] == hook.tls.cert and conf["keyfile"] == hook.tls.key
    assert conf["ssl_context"](None, None) is hook.tls.context()
    assert conf["accesslog"] is None


def test_the_application_applies_them(tmp_path):
    server = WebhookServer(hook_with_tls(tmp_path), ServeOptions(port=9443))
    assert issubclass(server.cfg.worker_class, WebhookWorker) and server.cfg.is_ssl
    assert server.cfg.address == [("0.0.0.0", 9443)]
    if "control_socket_disable" in server.cfg.settings:
        assert server.cfg.control_socket_disable is True


def test_ipv6_addresses_are_bracketed():
    assert bind_address("::", 8443) == "[::]:8443"
    assert bind_address("[::1]", 8443) == "[::1]:8443"
    assert bind_address("0.0.0.0", 8443) == "0.0.0.0:8443"


def test_the_graceful_stop_fits_in_the_pods_termination_grace():
    # The kubelet runs preStop, then sends SIGTERM, and SIGKILLs at terminationGracePeriodSeconds:
    # gunicorn's graceful timeout (the bound on a worker's drain) must end before that.
    pod = yaml.safe_load(DEPLOYMENT.read_text())["spec"]["template"]["spec"]
    container = pod["containers"][0]
    conf = settings(ServeOptions(), Webhook(settings=Settings(), metrics=Metrics(), warmed=True))
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pre_stop + conf["graceful_timeout"] < pod["terminationGracePeriodSeconds"]
