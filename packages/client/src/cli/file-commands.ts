import { createReadStream, createWriteStream } from 'node:fs';
import { link, rename, rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import mimeTypes from 'mime-types';
import { optionalString, UsageError, type Command } from './command.js';
import { CONNECTION, withClient } from './with-client.js';

/**
 * `ams upload` and `ams download` (docs/client.md): a file streamed from disk to the service, and
 * back from the service to disk, never whole in memory.
 */

/** What a file of that name holds, by its extension (mime-types, the registry's list), or plain bytes. */
export const contentTypeOf = (name: string): string => mimeTypes.lookup(name) || 'application/octet-stream';

/** A download refused because its target exists: exit 1, nothing written. */
const exists = (target: string): Error => new Error(`${target} exists: ams download never writes over a file (--force replaces it; -o names another)`);

const isFileError = (err: unknown, code: string): boolean => (err as NodeJS.ErrnoException | null)?.code === code;

/**
 * Puts the finished `.part` under its name. Without `force`, a hard link: it fails if the name was
 * taken meanwhile, where a rename would replace it. A file system without hard links gets the
 * check and the rename.
 */
async function putInPlace(partial: string, target: string, force: boolean): Promise<void> {
  if (force) return rename(partial, target);
  try {
    await link(partial, target);
  } catch (err) {
    if (isFileError(err, 'EEXIST')) throw exists(target);
    if (await stat(target).then(() => true, () => false)) throw exists(target);
    return rename(partial, target);
  }
  await rm(partial, { force: true });
}

export const fileCommands: Record<string, Command> = {
  upload: {
    usage: 'upload PATH [--name <file name>] [--content-type <type>] [--json]',
    summary: 'Upload a file (streamed from disk); prints its id (the stored file with --json). Attach it to a message by that id. Its type follows its name (report.pdf: application/pdf) unless --content-type says.',
    options: [...CONNECTION, 'name', 'content-type', 'json'],
    args: ['PATH'],
    run: (input) => withClient(input, async (client) => {
      const path = input.args[0]!;
      const info = await stat(path).catch(() => null);
      if (info === null || !info.isFile()) throw new UsageError(`${path} is not a readable file`);
      const name = optionalString(input, 'name') ?? basename(path);
      const contentType = optionalString(input, 'content-type') ?? contentTypeOf(name);
      const file = await client.uploadFile(name, createReadStream(path), { contentType });
      if (input.values.json === true) console.log(JSON.stringify(file, null, 2));
      else console.log(`uploaded ${file.id} (${file.name}, ${file.size} bytes, sha256 ${file.sha256})`);
      return 0;
    }),
  },
  download: {
    usage: 'download FILE_ID [-o <path>] [--force]',
    summary: 'Download a file to disk (streamed; by default to its own name in the current folder); never over an existing file unless --force.',
    options: [...CONNECTION, 'output', 'force'],
    args: ['FILE_ID'],
    fields: { id: 'FILE_ID' },
    run: (input) => withClient(input, async (client) => {
      const output = optionalString(input, 'output');
      const force = input.values.force === true;
      const taken = async (path: string): Promise<boolean> => !force && (await stat(path).then(() => true, () => false));
      if (output !== undefined && (await taken(output))) throw exists(output);
      const file = await client.downloadFile(input.args[0]!);
      const target = output ?? (safeName(file.name) || file.id);
      if (await taken(target)) {
        await file.body.cancel();
        throw exists(target);
      }
      // Written beside the target, then put in place: an interrupted download leaves no half file under its name.
      const partial = `${target}.part`;
      try {
        await pipeline(Readable.fromWeb(file.body as WebReadableStream<Uint8Array>), createWriteStream(partial, { flags: force ? 'w' : 'wx' }));
        await putInPlace(partial, target, force);
      } catch (err) {
        // A .part that was there before (wx refused it) is not ours to remove.
        if (!isFileError(err, 'EEXIST')) await rm(partial, { force: true });
        throw err;
      }
      console.log(`downloaded ${file.id} to ${target} (${file.size} bytes)`);
      return 0;
    }),
  },
};

/** A name the service gave, as a file name in the current folder: its last segment only. */
const safeName = (name: string): string => basename(name.replace(/\\/g, '/')).replace(/^\.+$/, '');
