# Per forward (attn_fwd range) of an attnprof trace: each runtime/driver API
# call with its host duration and the gap before it (our C code + the
# library's own work). Usage: python3 api_gaps.py TRACE.json
import json,sys
d=json.load(open(sys.argv[1])); ev=d['traceEvents'] if isinstance(d,dict) else d
fw=[e for e in ev if e.get('cat')=='user_annotation' and e.get('name')=='attn_fwd']
api=sorted([e for e in ev if e.get('cat') in ('cuda_runtime','cuda_driver') and e.get('ph')=='X'],key=lambda e:e['ts'])
for f in fw:
    t0,t1=f['ts'],f['ts']+f['dur']
    print('forward ts=%.1f dur=%.1f us'%(t0,f['dur']))
    prev=t0
    for a in api:
        if t0<=a['ts']<=t1:
            print('  gap %7.2f  %-22s %7.2f us'%(a['ts']-prev,a['name'],a['dur']))
            prev=a['ts']+a['dur']
    print('  gap %7.2f  (to end)'%(t1-prev))
