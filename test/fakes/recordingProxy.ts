import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A pass-through to an OpenAI-compatible server that records the headers of
 * each request, so a test can see what credentials the models really sent.
 */
export async function recordingProxy(target: string): Promise<{ url: string; headers: IncomingHttpHeaders[]; close(): Promise<void> }> {
  const headers: IncomingHttpHeaders[] = [];
  const t = new URL(target);
  const server = createServer((req, res) => {
    headers.push(req.headers);
    const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host } }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    });
    up.on('error', (e) => res.writeHead(502).end(String(e)));
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    headers,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
