import sys, torch
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity, schedule
torch.manual_seed(0)
torch.set_num_threads(1)
B, H, L, E = 4, 4, 64, 32
proj = torch.nn.Linear(E * H, 3 * E * H)
opt = torch.optim.SGD(proj.parameters(), lr=0.01)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
             schedule=schedule(wait=1, warmup=1, active=3)) as prof:
    for step in range(5):
        x = torch.randn(B, L, E * H)
        q, k, v = proj(x).view(B, L, 3, H, E).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=sys.argv[2] == "causal")
        out.sum().backward()
        opt.step(); opt.zero_grad()
        prof.step()
prof.export_chrome_trace(sys.argv[1])
