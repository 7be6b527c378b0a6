"""Running work outside the evaluator's own process: the submission trial sandbox (:mod:`.sandbox`)."""
