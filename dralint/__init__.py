"""dralint: lint Kubernetes Dynamic Resource Allocation manifests before the cluster does."""

__version__ = "0.5.0"
