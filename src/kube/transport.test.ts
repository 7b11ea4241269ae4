import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { HttpMethod, RequestContext } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestTimeoutError, timeoutHttpLibrary } from './transport.js';
import { isTransient } from './retry.js';

/** A server that answers /ok, never answers /silent and stalls halfway through the body of /stall. */
describe('timeoutHttpLibrary', () => {
  let server: http.Server;
  let base: string;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/ok') res.end('{"kind":"Status"}');
      else if (req.url?.startsWith('/stall')) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"items":[');
      }
      // /silent: no answer at all
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  const send = (path: string, ms: number) =>
    timeoutHttpLibrary(ms)
      .send(new RequestContext(`${base}${path}`, HttpMethod.GET))
      .toPromise();

  it('passes an answer through', async () => {
    const response = await send('/ok', 1_000);
    expect(response.httpStatusCode).toBe(200);
    expect(await response.body.text()).toBe('{"kind":"Status"}');
  });

  it('ends a request the server never answers with a transient RequestTimeoutError naming the request', async () => {
    const started = performance.now();
    const err = await send('/silent?labelSelector=a%3Db', 200).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect((err as Error).message).toBe('no answer from the API within 0.2 s (GET /silent)');
    expect(isTransient(err)).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('ends a body that stops halfway the same way', async () => {
    const response = await send('/stall', 200);
    const err = await response.body.text().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect(isTransient(err)).toBe(true);
  });

  it('leaves an abort by the caller as it was', async () => {
    const request = new RequestContext(`${base}/silent`, HttpMethod.GET);
    const caller = new AbortController();
    request.setSignal(caller.signal);
    const sent = timeoutHttpLibrary(10_000).send(request).toPromise();
    caller.abort();
    const err = await sent.catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(RequestTimeoutError);
    expect((err as Error).name).toBe('AbortError');
  });
});
