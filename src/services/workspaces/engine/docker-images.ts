// The snapshot calls of the Docker engine (engine/engine.ts documents each): commit a container to an
// image, read a directory as a tar, remove and list Keel's snapshot images. Kept apart from docker.ts
// only for size; it takes docker.ts's dockerode client.
import type { Readable } from 'node:stream';
import type { DockerClient } from './docker';
import { LABEL_INSTANCE, LABEL_MANAGED, LABEL_SNAPSHOT, type Engine } from './engine';
import { call, callOr } from './docker-calls';

type ImageCalls = Pick<Engine, 'commit' | 'getArchive' | 'imageSize' | 'removeImage' | 'listSnapshotImages'>;

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

    async removeImage(ref) {
      await callOr(404, undefined, () => docker.getImage(ref).remove({ force: false }));
    },

    async listSnapshotImages(instance) {
      const list = await call(() => docker.listImages({ filters: { label: [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${instance}`, LABEL_SNAPSHOT] } }));
      return list.map((i) => ({ ref: i.RepoTags?.find((t) => t !== '<none>:<none>') ?? i.Id, snapshotId: i.Labels?.[LABEL_SNAPSHOT] ?? '' }));
    },
  };
}
