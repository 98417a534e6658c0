package main

// volcanoVersion is the volcano.sh/volcano release this oracle is built from; build.py
// pins the same one, and a test checks that advise's modelled version agrees.
const volcanoVersion = "v1.15.0"
