"""What dralint knows about Kubernetes itself: releases and their gates, the API server's limits,
quantities and apimachinery's validation, and the shapes of the API per version.

The floor under every stage: nothing here imports the rest of dralint.
"""
