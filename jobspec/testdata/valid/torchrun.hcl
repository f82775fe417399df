job "ddp" {
  training {
    launcher          = "torchrun"
    global_batch_size = 64
    steps_per_epoch   = 23
  }

  elastic {
    workers {
      max = 2
    }
  }

  worker {
    driver = "raw_exec"
    config {
      command = "/usr/bin/python3"
      args    = ["-m", "caravan_torch", "torchrun", "train.py"]
    }
  }
}
