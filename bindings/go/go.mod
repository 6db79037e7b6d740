module chash.dev/chash

go 1.19
