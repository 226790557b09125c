"""dralint's ValidatingAdmissionWebhook: the engine behind Flask, served by gunicorn over TLS."""
