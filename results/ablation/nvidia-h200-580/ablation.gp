set terminal svg size 1000,600 dynamic font 'sans,11'
set output 'results/ablation/nvidia-h200-580/ablation.svg'
set title "Ablation paper on NVIDIA H200" noenhanced
set style fill solid 0.6 border -1
set boxwidth 0.6
set grid ytics
set ylabel 'UNet ms per iteration (median)'
set y2label 'planned activations (MiB)'
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set xtics rotate by -25 noenhanced
set key top right
plot 'results/ablation/nvidia-h200-580/ablation.dat' using 1:3:xtic(2) with boxes title 'UNet ms/iter', '' using 1:4 axes x1y2 with linespoints lw 2 pt 7 title 'activations MiB'
set terminal pngcairo size 1000,600 font 'sans,10'
set output 'results/ablation/nvidia-h200-580/ablation.png'
set title "Ablation paper on NVIDIA H200" noenhanced
set style fill solid 0.6 border -1
set boxwidth 0.6
set grid ytics
set ylabel 'UNet ms per iteration (median)'
set y2label 'planned activations (MiB)'
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set xtics rotate by -25 noenhanced
set key top right
plot 'results/ablation/nvidia-h200-580/ablation.dat' using 1:3:xtic(2) with boxes title 'UNet ms/iter', '' using 1:4 axes x1y2 with linespoints lw 2 pt 7 title 'activations MiB'
