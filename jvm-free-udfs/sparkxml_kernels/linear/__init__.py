"""Linear SVMs by dual coordinate descent: binary (hinge / squared hinge), one-vs-rest and
Crammer-Singer, with Shark's or liblinear's coordinate schedule, distributed by CoCoA+."""
