# Open-loop load of HTTP recall: RATE requests/s spread over CONNS keep-alive connections for
# SECONDS; each latency is measured from the request's scheduled time, so a slow answer
# counts against the requests it delays (no coordinated omission), unlike wrk's closed loop.
# Usage: python3 openloop.py HOST:PORT KEY RATE SECONDS CONNS '["query", ...]'
# Prints one line: requests, errors (non-200 answers), p50, p90, p99 and max in ms.
import http.client, json, sys, threading, time
address, key, rate, seconds, conns = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
queries = json.loads(sys.argv[6])
host, port = address.split(":")
lat, errors, lock = [], [0], threading.Lock()
start = time.perf_counter() + 0.2
def worker(index):
    c = http.client.HTTPConnection(host, int(port))
    interval = conns / rate
    n = 0
    while True:
        scheduled = start + index * (1.0 / rate) + n * interval
        if scheduled - start > seconds:
            break
        now = time.perf_counter()
        if scheduled > now:
            time.sleep(scheduled - now)
        body = json.dumps({"query": queries[(n * conns + index) % len(queries)], "limit": 10})
        c.request("POST", "/v1/recall", body, {"Content-Type": "application/json", "Authorization": "Bearer " + key})
        r = c.getresponse(); r.read()
        done = time.perf_counter()
        with lock:
            lat.append(done - scheduled)
            if r.status != 200: errors[0] += 1
        n += 1
threads = [threading.Thread(target=worker, args=(i,)) for i in range(conns)]
for t in threads: t.start()
for t in threads: t.join()
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
print(f"rate {rate:.0f}/s for {seconds:.0f}s: {len(lat)} requests, {errors[0]} errors, p50 {q(0.5):.2f} ms, p90 {q(0.9):.2f} ms, p99 {q(0.99):.2f} ms, max {lat[-1]*1000:.2f} ms")
