job "broken" {
  training {
    global_batch_size = 64
  
}
