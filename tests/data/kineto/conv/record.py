import sys, torch
from torch.profiler import profile, ProfilerActivity, schedule
torch.manual_seed(0)
torch.set_num_threads(2)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3, padding=1),
                            torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True,
             schedule=schedule(wait=1, warmup=1, active=4)) as prof:
    for step in range(6):
        x = torch.randn(16, 3, 32, 32)
        loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 10, (16,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        prof.step()
prof.export_chrome_trace(sys.argv[1])
