/**
 * Pushes small made-up images into a registry through the distribution API, as a mirroring tool
 * does: blobs by a POST and a PUT of their digest, then an OCI manifest by tag or by its digest.
 * The images are a few hundred bytes each; a thousand manifests share one config and one layer.
 */
import { createHash, randomBytes } from 'node:crypto';
import https from 'node:https';
import type { SiteRegistry } from './site-registry.js';

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

const sha256 = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

interface BlobRef {
  digest: string;
  size: number;
}

interface Answer {
  status: number;
  location?: string;
}

export class Pusher {
  private readonly agent: https.Agent;
  /** the config and layer each repository's images share, uploaded once however many images are pushed at a time */
  private readonly shared = new Map<string, Promise<{ config: BlobRef; layer: BlobRef }>>();

  constructor(private readonly registry: SiteRegistry) {
    this.agent = new https.Agent({ keepAlive: true, maxSockets: 8, ca: registry.caPem });
  }

  close(): void {
    this.agent.destroy();
  }

  private send(method: string, url: string, body?: Buffer, type = 'application/octet-stream'): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        new URL(url, `https://${this.registry.host}`),
        {
          method,
          agent: this.agent,
          headers: {
            authorization: `Basic ${this.registry.auth}`,
            'content-type': type,
            'content-length': String(body?.length ?? 0),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, ...(res.headers.location && { location: res.headers.location }) }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  private async expect(what: string, answer: Promise<Answer>, status: number): Promise<Answer> {
    const got = await answer;
    if (got.status !== status) throw new Error(`${what}: ${got.status}, expected ${status}`);
    return got;
  }

  /** Uploads a blob (POST for an upload, PUT with its digest); its digest and size. */
  async blob(repository: string, data: Buffer): Promise<BlobRef> {
    const digest = sha256(data);
    const started = await this.expect(
      `upload to ${repository}`,
      this.send('POST', `/v2/${repository}/blobs/uploads/`),
      202,
    );
    const location = new URL(started.location!, `https://${this.registry.host}`);
    location.searchParams.set('digest', digest);
    await this.expect(`blob ${digest}`, this.send('PUT', location.toString(), data), 201);
    return { digest, size: data.length };
  }

  /**
   * An image in `repository`, distinct by `label`, pushed by its digest (and `tag` when given);
   * its manifest digest. Config and layer are uploaded once per repository and shared.
   */
  async image(repository: string, label: string, tag?: string): Promise<string> {
    let upload = this.shared.get(repository);
    if (!upload) {
      const config = Buffer.from(
        JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } }),
      );
      upload = (async () => ({
        config: await this.blob(repository, config),
        layer: await this.blob(repository, randomBytes(256)),
      }))();
      this.shared.set(repository, upload);
    }
    const shared = await upload;
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...shared.config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...shared.layer }],
        annotations: { 'org.opencontainers.image.title': label },
      }),
    );
    const digest = sha256(manifest);
    await this.expect(
      `manifest ${repository}@${digest}`,
      this.send('PUT', `/v2/${repository}/manifests/${digest}`, manifest, OCI_MANIFEST),
      201,
    );
    if (tag)
      await this.expect(
        `manifest ${repository}:${tag}`,
        this.send('PUT', `/v2/${repository}/manifests/${tag}`, manifest, OCI_MANIFEST),
        201,
      );
    return digest;
  }
}
