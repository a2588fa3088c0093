package main

// The kernel families that live in their own folder register themselves
// when imported; the others are in the kernels and backend packages.
import _ "github.com/kerntune/kerntune/family/all"
