from addressable.cli import main

main()
