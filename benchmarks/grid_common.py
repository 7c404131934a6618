"""The blocks the 1,000-cell benchmark specs share (bench_language.py and
bench_plan.py): the host, stack, server and workload of
examples/kimi-k25/upgrade.spec, and a baseline experiment. Each script adds
its own matrix experiment after these."""

COMMON = """variable "model" { default = "moonshotai/Kimi-K2.5" }

host "gpu8" {
  ssh  = "bench@gpu8"
  gpus = 8
}

stack "cu130" {
  python   = "3.12"
  cuda     = "13.0"
  packages = ["torch==2.9.1", "sglang==0.5.9", "sgl-kernel==0.3.21", "flashinfer-python==0.6.4"]
  env      = { CUDA_HOME = "/usr/local/cuda-13.0" }
}

server "kimi" {
  engine = "sglang"
  model  = var.model
  args   = { tp-size = 8, speculative-algorithm = "EAGLE3", speculative-num-steps = 3 }
}

workload "decode" {
  dataset    = "random"
  input_len  = 1024
  output_len = 256
  requests   = 32
  runs       = 5
}

experiment "base" {
  host     = host.gpu8
  stack    = stack.cu130
  server   = server.kimi
  workload = workload.decode
}

"""
