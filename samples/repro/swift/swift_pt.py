"""The reporter's entry point (ms-swift issue 6867 runs `torchrun ... ./swift_pt.py <swift pt flags>`)."""

from swift.pipelines import pretrain_main

if __name__ == "__main__":
    pretrain_main()
