"""The text of YAML documents as the user wrote it: where nodes are, and edits that keep the rest."""
