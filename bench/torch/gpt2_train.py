# PyTorch side of bench/nn-gpt2.ts: the exact baseline script of research/anchors-dl.md §B.0
# (GPT-2 124M, bf16 autocast, fp32 params, SDPA flash, AdamW; random tokens), plus one JSON line per run.
# usage: python3 gpt2_train.py B,compile,fused ...   e.g. 64,0,1 (eager fused) 64,1,1 (compiled)
# KERNEL_PROFILE=N: after the timed steps, N more under torch.profiler (CUDA activity only); each kernel's
# device time per step as JSON lines {"kernel", "usPerStep", "launchesPerStep"} (bench/py/kernel_times.py).
import os
import json,torch,time,torch.nn as nn,torch.nn.functional as F,sys
C,L,H,V,T=768,12,12,50304,1024
class B(nn.Module):
 def __init__(s):
  super().__init__();s.l1=nn.LayerNorm(C);s.a=nn.Linear(C,3*C);s.p=nn.Linear(C,C);s.l2=nn.LayerNorm(C);s.f=nn.Linear(C,4*C);s.q=nn.Linear(4*C,C)
 def forward(s,x):
  b,t,_=x.shape;q,k,v=s.a(s.l1(x)).view(b,t,3,H,C//H).permute(2,0,3,1,4)
  x=x+s.p(F.scaled_dot_product_attention(q,k,v,is_causal=True).transpose(1,2).reshape(b,t,C))
  return x+s.q(F.gelu(s.f(s.l2(x)),approximate='tanh'))
class G(nn.Module):
 def __init__(s):
  super().__init__();s.e=nn.Embedding(V,C);s.pe=nn.Embedding(T,C);s.h=nn.Sequential(*[B() for _ in range(L)]);s.lf=nn.LayerNorm(C);s.lm=nn.Linear(C,V,bias=False);s.lm.weight=s.e.weight
 def forward(s,i,y):
  x=s.lf(s.h(s.e(i)+s.pe(torch.arange(T,device='cuda'))))
  return F.cross_entropy(s.lm(x).float().view(-1,V),y.view(-1))
def run(n,c,fu):
 torch.cuda.empty_cache();torch.cuda.reset_peak_memory_stats()
 m=G().cuda();o=torch.optim.AdamW(m.parameters(),lr=3e-4,fused=fu);f=torch.compile(m) if c else m
 x=torch.randint(0,50257,(n,T),device='cuda');y=torch.randint(0,50257,(n,T),device='cuda')
 for i in range(30):
  if i==10:torch.cuda.synchronize();t0=time.time()
  with torch.autocast('cuda',torch.bfloat16):l=f(x,y)
  l.backward();o.step();o.zero_grad(set_to_none=True)
 torch.cuda.synchronize();dt=(time.time()-t0)/20;tp=n*T/dt
 print(f"B={n} compile={c} fused={fu} {dt*1e3:.1f}ms {tp:.0f}tok/s mfu989={tp*(6*124.48e6+6*L*C*T)/989e12:.3f}")
 print(json.dumps({"side":"torch","batch":n,"compile":c,"fused":fu,"stepMs":dt*1e3,"tokensPerSecond":tp,"peakGiB":torch.cuda.max_memory_allocated()/2**30}),flush=True)
 k=int(os.environ.get('KERNEL_PROFILE','0'))
 if k>0:
  from torch.profiler import profile,ProfilerActivity
  with profile(activities=[ProfilerActivity.CUDA]) as p:
   for _ in range(k):
    with torch.autocast('cuda',torch.bfloat16):l=f(x,y)
    l.backward();o.step();o.zero_grad(set_to_none=True)
   torch.cuda.synchronize()
  per={}
  for e in p.key_averages():
   us=getattr(e,'self_device_time_total',None) or getattr(e,'self_cuda_time_total',0)
   if not str(e.device_type).endswith('CUDA') or us<=0:continue
   t=per.setdefault(e.key[:90],[0,0.0]);t[0]+=e.count;t[1]+=us
  for name,(cnt,us) in sorted(per.items(),key=lambda a:-a[1][1]):
   print(json.dumps({"kernel":name,"usPerStep":us/k,"launchesPerStep":cnt/k,"batch":n,"compile":c}),flush=True)
for a in sys.argv[1:]:
 b,c,fu=a.split(',');run(int(b),c=='1',fu=='1')
# python3 g.py 16,0,0 16,0,1 32,0,1 64,0,1 32,1,1 64,1,1
