import { createReadStream, createWriteStream } from 'node:fs';
import { link, rename, rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { lookup } from 'mime-types';
import type { AmsClient } from '../index.js';
import { optionalString, UsageError, type Command, type CommandInput, type OptionName } from './command.js';

/**
 * `ams upload` and `ams download` (docs/client.md): a file streamed from disk to the service, and
 * back from the service to disk, never whole in memory.
 */

type WithClient = (input: CommandInput, work: (client: AmsClient) => Promise<number>) => Promise<number>;

export function fileCommands(withClient: WithClient, connection: readonly OptionName[]): Record<string, Command> {
  return {
    upload: {
      usage: 'upload PATH [--name <file name>] [--content-type <type>] [--json]',
      summary: 'Upload a file (streamed from disk); prints its id (the stored file with --json). Attach it to a message by that id.',
      options: [...connection, 'name', 'content-type', 'json'],
      args: ['PATH'],
      run: (input) => withClient(input, async (client) => {
        const path = input.args[0]!;
        const info = await stat(path).catch(() => null);
        if (info === null || !info.isFile()) throw new UsageError(`${path} is not a readable file`);
        const name = optionalString(input, 'name') ?? basename(path);
        // Unless told, the type the name says (so that an image previews), else the service's default.
        const contentType = optionalString(input, 'content-type') ?? (lookup(name) || undefined);
        const file = await client.uploadFile(name, createReadStream(path), contentType === undefined ? {} : { contentType });
        if (input.values.json === true) console.log(JSON.stringify(file, null, 2));
        else console.log(`uploaded ${file.id} (${file.name}, ${file.size} bytes, sha256 ${file.sha256})`);
        return 0;
      }),
    },
    download: {
      usage: 'download FILE_ID [-o <path>] [--force]',
      summary: 'Download a file to disk (streamed; by default to its own name in the current folder); never over an existing file unless --force.',
      options: [...connection, 'output', 'force'],
      args: ['FILE_ID'],
      fields: { id: 'FILE_ID' },
      run: (input) => withClient(input, async (client) => {
        const force = input.values.force === true;
        const output = optionalString(input, 'output');
        if (output !== undefined && !force && (await exists(output))) throw new UsageError(`${output} exists: not overwritten (--force to replace it)`);
        const file = await client.downloadFile(input.args[0]!);
        const target = output ?? (safeName(file.name) || file.id);
        // Written beside the target, then put in place: an interrupted download leaves no half file
        // under its name. Without --force it is linked, which fails if the name was taken meanwhile.
        const partial = `${target}.part`;
        try {
          await pipeline(Readable.fromWeb(file.body as WebReadableStream<Uint8Array>), createWriteStream(partial));
          if (force) {
            await rename(partial, target);
          } else {
            await link(partial, target).catch((err: unknown) => {
              throw (err as { code?: unknown }).code === 'EEXIST' ? new UsageError(`${target} exists: not overwritten (--force to replace it)`) : err;
            });
            await rm(partial, { force: true });
          }
        } catch (err) {
          await rm(partial, { force: true });
          throw err;
        }
        console.log(`downloaded ${file.id} to ${target} (${file.size} bytes)`);
        return 0;
      }),
    },
  };
}

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);

/** A name the service gave, as a file name in the current folder: its last segment only. */
const safeName = (name: string): string => basename(name.replace(/\\/g, '/')).replace(/^\.+$/, '');
