module keel.dev/keeld

go 1.19
