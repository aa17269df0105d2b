from coalign.cli import main

main()
