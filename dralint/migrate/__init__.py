"""``dralint migrate``: move manifests between resource.k8s.io versions, editing the text the user wrote."""
