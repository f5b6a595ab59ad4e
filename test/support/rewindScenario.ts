/**
 * Issue 35's scenario, shared by the rewind tests: turn 1 loads `df` and writes out.csv; turn 2 drops a column,
 * overwrites out.csv, deletes data.csv and runs a subprocess that writes side.txt (WS is the workspace).
 */
export const TURN_1 = `import pandas as pd
df = pd.read_csv(WS + "/data.csv")
df.to_csv(WS + "/out.csv", index=False)
return list(df.shape)`;

export const TURN_2 = `import os, subprocess, sys
df = df.drop(columns=["b"])
df.to_csv(WS + "/out.csv", index=False)
os.remove(WS + "/data.csv")
subprocess.run([sys.executable, "-c", "open('side.txt', 'w').write('from a subprocess')"], cwd=WS, check=True)
return list(df.shape)`;

/** data.csv before the turns (and out.csv as turn 1 writes it). */
export const DATA = 'a,b,c\n1,2,3\n4,5,6\n';
