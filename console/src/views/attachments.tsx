import { useEffect, useState } from 'preact/hooks';
import type { Message } from '@agent-messaging/client';
import { describeError, type Session } from '../session.js';

type Attachment = Message['attachments'][number];

/**
 * Raster types only are previewed: an SVG (or HTML) shown from a blob: URL of the console's origin
 * could run script there (docs/console.md, Security).
 */
const PREVIEWABLE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const previewable = (contentType: string): boolean => PREVIEWABLE.has(contentType.split(';')[0]!.trim().toLowerCase());

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * A file's bytes as a Blob of `type`: the download needs the session's JWT, so it is fetched by the
 * client, never by a plain link.
 */
async function fetchBlob(session: Session, id: string, type: string): Promise<Blob> {
  const file = await session.client.downloadFile(id);
  return new Blob([await new Response(file.body).arrayBuffer()], { type });
}

/** A message's files: links named by the file name (with the size beside), raster images shown too. */
export function Attachments({ session, attachments }: { session: Session; attachments: Attachment[] }) {
  if (attachments.length === 0) return null;
  return (
    <ul class="attachments">
      {attachments.map((a) => <AttachmentItem key={a.id} session={session} file={a} />)}
    </ul>
  );
}

function AttachmentItem({ session, file }: { session: Session; file: Attachment }) {
  const [src, setSrc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const image = previewable(file.contentType);
  useEffect(() => {
    if (!image) return undefined;
    let live = true;
    let url: string | null = null;
    fetchBlob(session, file.id, file.contentType).then((blob) => {
      if (!live) return;
      url = URL.createObjectURL(blob);
      setSrc(url);
    }, (err) => live && setError(describeError(err)));
    return () => {
      live = false;
      if (url !== null) URL.revokeObjectURL(url);
    };
  }, [session, file.id, file.contentType, image]);

  // Saved, never shown: as application/octet-stream the browser cannot render it in this origin.
  const download = (event: MouseEvent): void => {
    event.preventDefault();
    setError(null);
    fetchBlob(session, file.id, 'application/octet-stream').then((blob) => {
      const url = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = url;
      link.download = file.name;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    }, (err) => setError(describeError(err)));
  };
  return (
    <li class="attachment">
      <a href={`/api/v1/files/${encodeURIComponent(file.id)}`} onClick={download}>{file.name}</a>{' '}
      <span class="size">({formatSize(file.size)})</span>
      {src !== null && <img class="preview" src={src} alt={file.name} />}
      {error !== null && <p role="alert" class="error">{error}</p>}
    </li>
  );
}
