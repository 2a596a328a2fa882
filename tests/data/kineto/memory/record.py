import sys, torch
from torch.profiler import profile, ProfilerActivity, schedule
leak = sys.argv[2] == "leak"
torch.manual_seed(0)
torch.set_num_threads(2)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []
with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
             schedule=schedule(wait=1, warmup=1, active=8)) as prof:
    for step in range(10):
        x = torch.randn(64, 256)
        loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 10, (64,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if leak:
            kept.append(torch.ones(24 << 20, dtype=torch.uint8))  # 24 MiB a step, never freed
        prof.step()
prof.export_chrome_trace(sys.argv[1])
