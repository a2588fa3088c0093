package tuner
