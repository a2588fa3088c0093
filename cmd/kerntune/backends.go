package main

// The backends register themselves with the tuner when imported.
import (
	_ "github.com/kerntune/kerntune/tuner/cpu"
	_ "github.com/kerntune/kerntune/tuner/cuda"
	_ "github.com/kerntune/kerntune/tuner/metal"
	_ "github.com/kerntune/kerntune/tuner/opencl"
)
