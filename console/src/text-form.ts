import { useState } from 'preact/hooks';
import { describeError } from './session.js';

/**
 * The state of a form around one text box (the message composer, a new post, a reply): `submit`
 * sends non-blank text (or blank when `canSendBlank` says so) once at a time, empties the box when it worked, and keeps the text with an
 * error message when it did not.
 */
export function useTextForm(send: (text: string) => Promise<void>, canSendBlank: () => boolean = () => false) {
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (): Promise<void> => {
    if ((text.trim() === '' && !canSendBlank()) || busy) return;
    setBusy(true);
    setError(null);
    try {
      await send(text);
      setText('');
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return { text, setText, error, busy, submit };
}
