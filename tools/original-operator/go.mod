module osc.local/tools/original-operator

go 1.24

require golang.org/x/mod v0.17.0
