/** QEMU's machine protocol (QMP) on the VM's unix socket. */
import net from 'node:net';
import { delay, now } from './processes.js';

export interface QmpEvent {
  event: string;
  data?: Record<string, unknown>;
  timestamp?: { seconds: number; microseconds: number };
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  command: string;
}

/** Minimal QMP client: one JSON object per line; responses matched by id; events kept. */
export class Qmp {
  readonly events: QmpEvent[] = [];
  private buf = '';
  private nextId = 1;
  private pending = new Map<string, Pending>();
  private eventWaiters = new Set<(e: QmpEvent) => void>();
  private closed = false;
  private greeting?: () => void;

  private constructor(private readonly sock: net.Socket) {
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => this.onData(d));
    const fail = (): void => {
      this.closed = true;
      for (const p of this.pending.values()) p.reject(new Error(`QMP connection closed during ${p.command}`));
      this.pending.clear();
    };
    sock.on('close', fail);
    sock.on('error', fail);
  }

  /** Connects (retrying until the socket accepts or `alive()` turns false) and negotiates. */
  static async connect(path: string, timeoutMs: number, alive: () => boolean): Promise<Qmp> {
    const deadline = now() + timeoutMs;
    for (;;) {
      if (!alive()) throw new Error('qemu exited before its QMP socket accepted');
      const sock = await new Promise<net.Socket | undefined>((res) => {
        const s = net.createConnection(path);
        s.once('connect', () => res(s));
        s.once('error', () => {
          s.destroy();
          res(undefined);
        });
      });
      if (sock) {
        const qmp = new Qmp(sock);
        await new Promise<void>((res, rej) => {
          qmp.greeting = res;
          setTimeout(() => rej(new Error('no QMP greeting')), 30_000).unref();
        });
        await qmp.execute('qmp_capabilities');
        return qmp;
      }
      if (now() > deadline) throw new Error(`QMP socket ${path} did not accept within ${timeoutMs} ms`);
      await delay(100);
    }
  }

  private onData(d: string): void {
    this.buf += d;
    let i: number;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i).trim();
      this.buf = this.buf.slice(i + 1);
      if (line === '') continue;
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      if ('QMP' in msg) {
        this.greeting?.();
        this.greeting = undefined;
      } else if (typeof msg.event === 'string') {
        const e = msg as unknown as QmpEvent;
        this.events.push(e);
        for (const w of [...this.eventWaiters]) w(e);
      } else if (typeof msg.id === 'string') {
        const p = this.pending.get(msg.id);
        if (!p) continue;
        this.pending.delete(msg.id);
        if ('error' in msg) {
          const err = msg.error as { class?: string; desc?: string };
          p.reject(new Error(`QMP ${p.command}: ${err.class ?? 'Error'}: ${err.desc ?? line}`));
        } else {
          p.resolve(msg.return);
        }
      }
    }
  }

  execute<T = unknown>(command: string, args?: Record<string, unknown>, timeoutMs = 30_000): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`QMP closed; cannot run ${command}`));
    const id = `c${this.nextId++}`;
    return new Promise<T>((res, rej) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        rej(new Error(`QMP ${command}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      this.pending.set(id, {
        command,
        resolve: (v) => {
          clearTimeout(timer);
          res(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          rej(e);
        },
      });
      this.sock.write(JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}), id }) + '\n');
    });
  }

  /** Resolves with the first event named `name` (matching `pred`) seen after `since` (an index into events). */
  waitEvent(
    name: string,
    pred: (e: QmpEvent) => boolean = () => true,
    timeoutMs = 30_000,
    since = 0,
  ): Promise<QmpEvent> {
    const seen = this.events.slice(since).find((e) => e.event === name && pred(e));
    if (seen) return Promise.resolve(seen);
    return new Promise((res, rej) => {
      const waiter = (e: QmpEvent): void => {
        if (e.event === name && pred(e)) {
          clearTimeout(timer);
          this.eventWaiters.delete(waiter);
          res(e);
        }
      };
      const timer = setTimeout(() => {
        this.eventWaiters.delete(waiter);
        rej(new Error(`QMP event ${name} not seen within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      this.eventWaiters.add(waiter);
    });
  }

  close(): void {
    this.closed = true;
    this.sock.destroy();
  }
}
