module mlprof.test/spin

go 1.21
