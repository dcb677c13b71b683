// How the media web app writes a time: m:ss, or h:mm:ss past an hour.
export const duration = (ms: number) => {
  const s = Math.round(ms / 1000);
  const [hh, mm, ss] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  return hh ? `${hh}:${String(mm).padStart(2, '0')}:${String(ss).padStart(2, '0')}` : `${mm}:${String(ss).padStart(2, '0')}`;
};
