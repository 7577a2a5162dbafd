# The configuration idioms of the seed article (shared/seed/), kept as they were written there.
from pyspark.sql import SparkSession
from sglang import Runtime, RayRuntime
from vllm import LLMEngine

engine = LLMEngine(
    model="Qwen/Qwen3.5-35B-A3B",
    tensor_parallel_size=8,
    dtype="fp8",
    trust_remote_code=True,
)
engine.save_pretrained("./qwen35b_vllm_format")

spark = SparkSession.builder \
    .config("spark.executor.resource.gpu.amount", "1") \
    .config("spark.task.resource.gpu.amount", "0.125") \
    .getOrCreate()

runtime = Runtime(
    model_path="/nfs/qwen35b_sglang",
    mem_fraction=0.85,
    radix_size=32768,
    cuda_graph=True,
)
ray_runtime = RayRuntime(model_path="/nfs/qwen35b_sglang", num_gpus_per_worker=1, num_workers=32)
runtime.add_adapter(adapter_path="qwen-vl-gguf", modality="image")
LLMEngine(quantization="fp8_e4m3", enforce_eager=True)
Runtime(mixed_precision="bf16", cache_dtype="uint8")
LLMEngine(enable_lm_cache=True, lm_cache_size="20GB")
Runtime(offload_to_cpu=True, cpu_offload_size="25%")
LLMEngine(max_requests=1000)
Runtime(max_concurrent=800)
