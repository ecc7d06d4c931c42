"""(From ../shared/peers/peer_sd15_h200.py, so the device script can run it: scripts/device-memory.sh a; since session 40 its warm-up is timed, bench() says why.)
PyTorch + diffusers SD 1.5 (random weights, built from configs/models/sd15) on a CUDA GPU: UNet
batch 2 (CFG) per iteration, VAE decode, text encoder, and a 21-call loop like PNDM's 20 steps, fp32
(TF32 off) and fp16, eager; optionally fp16 torch.compile for the UNet (PEER_COMPILE=1).
Writes peer_sd15.json into the folder named by OUT, else the current one. Needs diffusers importable."""
import json, os, sys, time
import torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
from diffusers import UNet2DConditionModel, AutoencoderKL
from transformers import CLIPTextModel, CLIPTextConfig

M = sys.argv[1] if len(sys.argv) > 1 else 'configs/models/sd15'
dev = 'cuda'
R = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__}

def put(k, v):
    R[k] = v; print(k, v, flush=True)

WARM_S = float(os.environ.get('PEER_WARMUP_S', '1.0'))

def bench(fn, iters=10, warm=3):
    # At least `warm` runs and WARM_S seconds of them (PEER_WARMUP_S, default 1): after the
    # model builds or torch.compile's warm-up the GPU idled, and its clocks take ~0.8 s of
    # work to come back (runtime/timing.h; sdspeed run warms up 500 ms per component). With
    # 3 runs only, an H100 call of session 40 timed eager fp16 at 55.2 ms and compiled at
    # 30.5, where earlier calls on the same kind of card gave 39.0 and 16.5.
    t0 = time.time(); n = 0
    while n < warm or time.time() - t0 < WARM_S:
        fn(); torch.cuda.synchronize(); n += 1
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts) // 2]

with torch.device(dev):
    torch.manual_seed(0)
    unet = UNet2DConditionModel.from_config(UNet2DConditionModel.load_config(f'{M}/unet')).eval()
    vae = AutoencoderKL.from_config(AutoencoderKL.load_config(f'{M}/vae')).eval()
    te = CLIPTextModel(CLIPTextConfig.from_pretrained(f'{M}/text_encoder')).eval()
put('unet_params_M', sum(p.numel() for p in unet.parameters()) / 1e6)
# PEER_DTYPES=float16 skips the fp32 half (a short device call: the race needs fp16 only).
for dt in [getattr(torch, d) for d in os.environ.get('PEER_DTYPES', 'float32,float16').split(',') if d]:
    n = str(dt).split('.')[-1]
    unet.to(dt); vae.to(dt); te.to(dt)
    lat = torch.randn(2, 4, 64, 64, dtype=dt, device=dev); ctx = torch.randn(2, 77, 768, dtype=dt, device=dev)
    ids = torch.randint(0, 49408, (2, 77), device=dev)
    with torch.inference_mode():
        torch.cuda.reset_peak_memory_stats()
        put(f'unet_b2_{n}_ms', bench(lambda: unet(lat, 999, ctx)))
        put(f'unet_b2_{n}_peakMiB', torch.cuda.max_memory_allocated() / 2**20)
        put(f'text_encoder_b2_{n}_ms', bench(lambda: te(ids)))
        torch.cuda.reset_peak_memory_stats()
        put(f'vae_decode_b1_{n}_ms', bench(lambda: vae.decode(lat[:1]), iters=5, warm=2))
        put(f'vae_decode_b1_{n}_peakMiB', torch.cuda.max_memory_allocated() / 2**20)
        def e2e():
            c = te(ids)[0]; x = lat.clone()
            for i in range(21): x = x - 0.01 * unet(x, 999 - 47 * i, c).sample
            return vae.decode(x[:1]).sample
        put(f'e2e_21unet_{n}_ms', bench(e2e, iters=3, warm=1))
if os.environ.get('PEER_COMPILE') == '1':
    unet.to(torch.float16)
    cu = torch.compile(unet)
    lat = torch.randn(2, 4, 64, 64, dtype=torch.float16, device=dev); ctx = torch.randn(2, 77, 768, dtype=torch.float16, device=dev)
    with torch.inference_mode():
        t0 = time.time(); cu(lat, 999, ctx); torch.cuda.synchronize(); put('unet_compile_fp16_warmup_s', time.time() - t0)
        put('unet_b2_float16_compiled_ms', bench(lambda: cu(lat, 999, ctx)))
json.dump(R, open(os.path.join(os.environ.get('OUT', '.'), 'peer_sd15.json'), 'w'), indent=1)
