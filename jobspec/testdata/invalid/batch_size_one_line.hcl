job "cifar" {
  training {
    architecture    = "allreduce"
    steps_per_epoch = 390
    batch_size { min = 128  max = 4096 }
  }
}
