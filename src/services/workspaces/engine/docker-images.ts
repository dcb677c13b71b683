// The image calls of the Docker engine (engine/engine.ts documents each): commit a container to an
// image, read a directory as a tar, remove and list Keel's snapshot images, build a template's image
// with its output streamed, read an image's config and small files. Kept apart from docker.ts only for size; it
// takes docker.ts's dockerode client.
import { PassThrough, type Readable } from 'node:stream';
import { extract } from 'tar-stream';
import type { DockerClient } from './docker';
import { LABEL_INSTANCE, LABEL_MANAGED, LABEL_SNAPSHOT, type Engine } from './engine';
import { call, callOr } from './docker-calls';
import { EngineError } from './engine';
import { jsonLineSplitter } from './frames';

type ImageCalls = Pick<Engine, 'commit' | 'getArchive' | 'imageSize' | 'removeImage' | 'listSnapshotImages' | 'buildStreaming' | 'imageConfig' | 'imageFiles'>;

const FILE_MAX_BYTES = 1024 * 1024;

/** The first regular file of a tar stream, at most FILE_MAX_BYTES of it. */
function firstFile(tar: Readable): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const x = extract();
    let found: string | null = null;
    x.on('entry', (header, stream, next) => {
      if (found !== null || header.type !== 'file') {
        stream.resume();
        stream.on('end', next);
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (c: Buffer) => {
        if (size < FILE_MAX_BYTES) chunks.push(c);
        size += c.length;
      });
      stream.on('end', () => {
        found = Buffer.concat(chunks).subarray(0, FILE_MAX_BYTES).toString('utf8');
        next();
      });
    });
    x.on('finish', () => resolve(found));
    x.on('error', reject);
    tar.on('error', reject);
    tar.pipe(x);
  });
}

export function imageCalls(docker: DockerClient): ImageCalls {
  return {
    async commit(id, ref, labels) {
      const [repo, tag] = ref.split(':');
      // pause: true (the engine's default) freezes the processes while the layer is written: a consistent copy.
      await call(() => docker.getContainer(id).commit({ repo, tag, pause: true, changes: Object.entries(labels).map(([k, v]) => `LABEL ${k}=${v}`) }));
    },

    async getArchive(id, path) {
      return (await call(() => docker.getContainer(id).getArchive({ path }))) as unknown as Readable;
    },

    async imageSize(ref) {
      const info = await callOr(404, null, () => docker.getImage(ref).inspect());
      return info ? info.Size : null;
    },

    async imageFiles(ref, paths) {
      // Created, never started: no process runs; no network, so it joins none.
      const c = await call(() => docker.createContainer({ Image: ref, Cmd: ['/keel-never-run'], NetworkDisabled: true, HostConfig: { NetworkMode: 'none' }, Labels: { 'dev.keel.reader': 'true' } }));
      try {
        const out: Record<string, string | null> = {};
        for (const path of paths) {
          const tar = await callOr(404, null, () => c.getArchive({ path }) as unknown as Promise<Readable>);
          out[path] = tar ? await firstFile(tar) : null;
        }
        return out;
      } finally {
        await c.remove({ force: true }).catch(() => {});
      }
    },

    async imageConfig(ref) {
      const info = await callOr(404, null, () => docker.getImage(ref).inspect());
      if (!info) return null;
      const c = info.Config ?? {};
      return { user: c.User ?? '', workdir: c.WorkingDir ?? '', env: c.Env ?? [], cmd: c.Cmd ?? null, entrypoint: (c.Entrypoint as string[] | null | undefined) ?? null };
    },

    /**
     * `docker build` of a context tar, each output line to `onLine`; no network for its steps, ended
     * (the engine cancels it) when `signal` aborts. A failure names the step it failed in.
     */
    async buildStreaming(context, ref, opts) {
      const src = new PassThrough();
      src.end(context);
      const stream = (await call(() => docker.buildImage(src as unknown as NodeJS.ReadableStream, { t: ref, networkmode: 'none', forcerm: true }) as Promise<Readable>)) as Readable;
      const abort = () => stream.destroy(new Error('the build ran past its time limit'));
      opts.signal.addEventListener('abort', abort, { once: true });
      let step = '';
      let failure: string | undefined;
      try {
        await new Promise<void>((resolve, reject) => {
          stream.on('data', jsonLineSplitter((v) => {
            const o = v as { stream?: string; error?: string; errorDetail?: { message?: string } };
            for (const line of (o.stream ?? '').split('\n')) {
              if (!line.trim()) continue;
              if (/^Step \d+\/\d+ : /.test(line)) step = line;
              opts.onLine(line);
            }
            if (o.error || o.errorDetail) {
              failure = o.errorDetail?.message ?? o.error ?? 'the build failed';
              opts.onLine(failure);
            }
          }));
          stream.on('end', resolve);
          stream.on('close', resolve);
          stream.on('error', reject);
        });
      } catch (e) {
        throw new EngineError(opts.signal.aborted ? `${step ? `${step}: ` : ''}the build ran past its time limit` : (e as Error).message);
      } finally {
        opts.signal.removeEventListener('abort', abort);
      }
      if (opts.signal.aborted) throw new EngineError(`${step ? `${step}: ` : ''}the build ran past its time limit`);
      if (failure) throw new EngineError(step ? `${step}: ${failure}` : failure);
    },

    async removeImage(ref) {
      await callOr(404, undefined, () => docker.getImage(ref).remove({ force: false }));
    },

    async listSnapshotImages(instance) {
      const list = await call(() => docker.listImages({ filters: { label: [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`, LABEL_SNAPSHOT] } }));
      return list.map((i) => ({ ref: i.RepoTags?.find((t) => t !== '<none>:<none>') ?? i.Id, snapshotId: i.Labels?.[LABEL_SNAPSHOT] ?? '' }));
    },
  };
}
