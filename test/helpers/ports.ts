/** Free ports of the host's loopback for the real servers the tests start. */
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

/**
 * a UDP port of 127.0.0.1 free at this moment; another process may take it (or its TCP twin)
 * before the caller binds it
 */
export async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', resolve);
  });
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** a TCP port of 127.0.0.1 free at this moment; another process may take it before the caller binds it */
export async function freeTcpPort(): Promise<number> {
  const server = createServer();
  server.unref();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address !== 'object') throw new Error('no TCP port bound');
  return address.port;
}
