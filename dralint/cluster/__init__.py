"""The live cluster: the API server's client (:mod:`.api`), finding it as kubectl does
(:mod:`.connect`), what it says about itself (:mod:`.discovery`), its state listed for a run
(:mod:`.state`) and the command line's ``--kubeconfig`` (:mod:`.command`).

Needs the ``cluster`` extra (``pip install 'dralint[cluster]'``) only once a connection is made;
the engine never imports this package.
"""
