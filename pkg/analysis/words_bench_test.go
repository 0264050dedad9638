package analysis

import "testing"

// BenchmarkWords splits one description of each kind: ASCII (the fast
// path), non-ASCII Latin, and scripts with marks or without spaces.
func BenchmarkWords(b *testing.B) {
	for _, tt := range []struct{ name, text string }{
		{"ascii", "Create a pull request in a repository, optionally as a draft, from a head branch into a base branch."},
		{"latin", "Créer une demande de fusion dans un dépôt — éventuellement en brouillon — depuis une branche."},
		{"chinese", "在代码仓库中创建一个合并请求，可以作为草稿，从源分支合并到目标分支。"},
		{"cyrillic", "Создать запрос на слияние в репозитории, при необходимости как черновик, из одной ветки в другую."},
		{"hindi", "किसी रिपॉज़िटरी में पुल अनुरोध बनाएं, वैकल्पिक रूप से ड्राफ़्ट के रूप में।"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				AppendWords(tt.text, func(string) {})
			}
		})
	}
}
