job "ddp" {
  training {
    architecture      = "allreduce"
    launcher          = "horovodrun"
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
  }
}
