"""dralint's ValidatingAdmissionWebhook: the engine behind Flask, served by gunicorn over TLS.

Modules, one job each:

* ``admission`` reads an AdmissionReview request; ``answers`` writes the AdmissionReview back.
* ``judge`` decides one request (engine findings, organisation rules, policy) into a ``verdict``.
* ``policy`` parses the policy file, its ``organization`` section the organisation rules judge with;
  ``enforcement`` is what each rule's errors do (deny, warn, dryrun).
* ``cluster`` holds the cluster state for feasibility; ``reloading`` re-reads changed files.
* ``tls`` is the serving context with certificate reload; ``certs`` makes a CA and a certificate.
* ``app`` is the Flask app and the webhook's state; ``warmup`` fills the engine's caches.
* ``metrics`` (Prometheus text format), ``processes`` (the replica's processes and their
  ``process_*`` numbers), ``logs`` (JSON lines), ``manifests`` (the
  ValidatingWebhookConfiguration), ``gunicorn_conf`` (serving), ``cli`` (the command).
"""
