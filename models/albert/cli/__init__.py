"""What the command-line tools share: the argparse groups and old spellings (flags), turning
parsed flags into a run spec (resolve), and the serving tools' checks (serving)."""
