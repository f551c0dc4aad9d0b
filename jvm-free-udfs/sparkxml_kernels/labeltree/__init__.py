"""Label trees for extreme multi-label learning (Parabel, Bonsai): label representations,
balanced spherical k-means trees, linear node classifiers and beam-search prediction.

Modules: ``data`` (row normalisation, label representations), ``cluster`` (the label tree),
``logistic`` (dual coordinate descent for L2 logistic regression), ``nodes`` (the node
classifiers), ``forest`` (trees trained into flat arrays), ``predictor`` (beam search),
``naive`` (slow twins for tests).
"""
