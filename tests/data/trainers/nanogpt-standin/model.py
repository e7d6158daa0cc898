# the stand-in's model.py: declared in the example's trainer.files, so it must exist
