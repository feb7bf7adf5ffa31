# Every srand(seed) call of the program is made with $seed instead (set it with -ex "set $seed = S").
set pagination off
break *srand
commands
silent
set $rdi = $seed
continue
end
