"""What every sparkxml family shares: the Estimator/Model bases and params, validation, the
barrier seam and its worker rules, Arrow helpers, the histogram engine's driver and task
sides, progress, model storage and serving, and the pyspark version shims.

Nothing here is public API; the families' packages and ``sparkxml`` itself are.
"""
