from torch.utils.data import DataLoader
from torchvision import datasets, transforms

train_tf = transforms.Compose([
    transforms.Resize(288),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
])
loader = DataLoader(datasets.ImageFolder("train", transform=train_tf), batch_size=16, drop_last=True)
for images, labels in loader:
    model(images, labels).backward()
