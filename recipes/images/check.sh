#!/bin/sh
# The catalogue image's check, run in the image by images.check: each
# package of IMAGE_PACKAGES installed (dpkg-query), the Debian release,
# and the first line of each family tool's version. Writes packages.tsv,
# os-release and tools.txt to $NAVETTE_OUTPUTS; a missing package fails
# with "image-check: FAILED" and its name.
set -u
out=$NAVETTE_OUTPUTS
missing=
: >"$out/packages.tsv"
for p in $IMAGE_PACKAGES; do
	v=$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$p" 2>/dev/null)
	case $v in
	"ii "*) printf '%s\t%s\n' "$p" "${v#ii }" >>"$out/packages.tsv" ;;
	*) missing="$missing $p" ;;
	esac
done
cp /etc/os-release "$out/os-release" || {
	echo "image-check: FAILED: the image has no /etc/os-release"
	exit 1
}
if [ -n "$missing" ]; then
	echo "image-check: FAILED: not installed in the image:$missing"
	exit 1
fi
: >"$out/tools.txt"
for tool in python3 ffmpeg sox espeak-ng; do
	if command -v "$tool" >/dev/null 2>&1; then
		printf '%s: %s\n' "$tool" "$("$tool" --version 2>&1 | head -n 1)" >>"$out/tools.txt"
	fi
done
. /etc/os-release
echo "image-check: ok: $(wc -l <"$out/packages.tsv" | tr -d ' ') packages on $PRETTY_NAME"
cat "$out/tools.txt"
